"""A local multi-node Ray cluster on loopback, its processes told apart by a tag of its own.

Laptops and CI need "two Ray nodes" without two machines: a head and ``nodes - 1`` more
``ray start`` processes on this host. Each cluster gets

* its own short temp dir (``/tmp/wb-ray-<hash>``: Ray's AF_UNIX socket paths must stay short),
* every port chosen free and moved off Ray's defaults (so it never collides with another
  cluster on the machine, nor with a ``ray.init()`` of a local run),
* logical devices per node (``--num-gpus`` for GPUs, ``--resources '{"NPU": n}'`` otherwise),
* token authentication as Ray does it for local clusters (a token in ``~/.ray/auth_token``),
* a process tag in the environment of every process it runs (:mod:`workbook.launch.processes`).

One module per concern, imported directly (this package re-exports nothing):

* :mod:`~workbook.launch.cluster.state`: the state file (addresses, temp dir, tag, PIDs) in
  ``$WORKBOOK_CLUSTER_STATE`` or ``~/.cache/verl-workbook/cluster.json``, so ``up`` is idempotent
  and ``down`` knows what to stop;
* :mod:`~workbook.launch.cluster.lifecycle`: ``up`` and ``down``. ``down`` never runs ``ray stop``
  (that stops every Ray cluster of the machine): it stops the processes carrying the cluster's
  tag (:func:`workbook.launch.processes.end_tagged`), for a state file the workbook wrote only;
* :mod:`~workbook.launch.cluster.probe`: what the cluster's dashboard says now (alive, status);
* :mod:`~workbook.launch.cluster.on_demand`: the scenario policy runs, suites and sweeps share
  (a cluster of a scenario's shape, started for a run and stopped after it).

How one node is started (ports, ``ray start`` argv) is :mod:`workbook.launch.ray_nodes`.
"""
