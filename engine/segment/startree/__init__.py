"""Star-tree indexes, as Pinot defines them.

A star-tree pre-aggregates the metrics in ``functionColumnPairs`` over the dimensions in
``dimensionsSplitOrder``. Records are rows of (dimension dict ids, aggregated metric states);
``STAR`` (-1) in a dimension means "aggregated over every value of it". The tree splits on the
dimensions in order: a node at level ``L`` has one child per dict id of dimension ``L`` plus,
unless the dimension is in ``skipStarNodeCreationForDimensions`` or there is only one child, a
star child whose records aggregate that dimension away. A node with at most
``maxLeafRecords`` records, or at the last level, is a leaf.

Reading (``segment.star_trees[i]``)::

    tree.dimensions_split_order, tree.function_column_pairs, tree.max_leaf_records
    tree.root -> StarTreeNode(level, dimension, value, start_record, end_record,
                              is_leaf, children, star_child, child(dict_id))
    tree.matching_records({"dim": [dict ids]}, group_by=["dim2"]) -> record ids
    tree.dimension("dim") -> int32 dict ids per record (-1 = STAR)
    tree.metric("SUM__m") / tree.metric("AVG__m", "sum") -> per-record aggregated state
    tree.components("AVG__m") -> ("sum", "count")

Aggregated states per function: SUM/SUMMV -> sum; COUNT/COUNTMV -> count; MIN/MINMV -> min;
MAX/MAXMV -> max; AVG/AVGMV -> sum and count; MINMAXRANGE -> min and max. Sums, mins and
maxes are float64; counts int64. Combine states with +, min, max respectively.
"""

from engine.segment.startree.reader import STAR, StarTree, StarTreeNode

__all__ = ["STAR", "StarTree", "StarTreeNode"]
