"""Rules of the subtask progress and error views that need no service: the 1000-character cut
of a subtask's ``info`` keeps the traceback's last lines, and Helix's subtask states map to a
minion's."""

from __future__ import annotations

from tasks.logic.sync import INFO_LIMIT, info_for_api
from tasks.logic.task_info import MinionTaskState, minion_task_state


def traceback_of(frames: int) -> str:
    lines = ["Traceback (most recent call last):"]
    for i in range(frames):
        lines += [f'  File "/srv/sprig/tasks/frame_{i}.py", line {i + 10}, in step_{i}',
                  f"    result = step_{i + 1}(rows, configs)"]  # fmt: skip
    lines.append("spark_jobs.errors.MergeError: bucket 2024-01-01 has no time column 'ts'")
    return "\n".join(lines)


def test_a_short_info_is_kept_whole():
    text = traceback_of(3)
    assert len(text) < INFO_LIMIT and info_for_api(text) == text
    assert info_for_api("") == ""


def test_a_long_traceback_keeps_its_header_and_its_tail():
    text = traceback_of(40)
    cut = info_for_api(text)
    assert len(text) > INFO_LIMIT >= len(cut)
    assert len(cut) > INFO_LIMIT - 250  # the cut uses the room it has
    lines = cut.split("\n")
    assert lines[0] == "Traceback (most recent call last):"
    # the marker is indented, like a frame, so an error headline never reads it as the error
    assert lines[1].startswith("  ... (") and lines[1].endswith(" characters cut) ...")
    removed = int(lines[1].split("(")[1].split()[0])
    assert len(text) - removed == len(cut) - len(lines[1]) - 2
    # the tail starts at a whole line and ends with the exception
    assert lines[2].startswith(("  File ", "    result"))
    assert lines[-1] == "spark_jobs.errors.MergeError: bucket 2024-01-01 has no time column 'ts'"
    assert text.endswith("\n".join(lines[2:]))


def test_one_huge_line_keeps_its_start_and_end():
    text = "ValueError: " + "x" * 5000 + " END"
    cut = info_for_api(text)
    assert len(cut) <= INFO_LIMIT
    assert cut.startswith("ValueError: xxx") and cut.endswith("xxx END")
    assert "characters cut" in cut


def test_helix_states_map_to_minion_states():
    expected = {None: "UNKNOWN", "INIT": "IN_PROGRESS", "RUNNING": "IN_PROGRESS",
                "COMPLETED": "SUCCEEDED", "STOPPED": "CANCELLED", "TASK_ABORTED": "CANCELLED",
                "DROPPED": "CANCELLED", "TASK_ERROR": "ERROR", "ERROR": "ERROR",
                "TIMED_OUT": "ERROR"}  # fmt: skip
    assert {state: minion_task_state(state).value for state in expected} == expected
    assert {s.value for s in MinionTaskState} == set(expected.values())
