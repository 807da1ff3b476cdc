"""What the controller's Django apps share below them: the error tree their logic raises
(``controller.errors``; the API answers each with Pinot's error JSON) and the process's one
ZooKeeper session (``controller.zk``). The minion task framework (``tasks``) and the cluster
metadata app (``cluster``) both stand on it, so it imports none of the apps."""
