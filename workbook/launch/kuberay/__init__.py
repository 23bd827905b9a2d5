"""KubeRay: run a plan as a ``RayJob`` on a Kubernetes cluster (``launcher: kuberay``).

Four modules, imported directly (this package re-exports nothing):

* :mod:`~workbook.launch.kuberay.manifest`: the pure ``ray.io/v1`` RayJob builder (pods,
  entrypoint, runtime env, the ``kuberay:`` settings and their defaults);
* :mod:`~workbook.launch.kuberay.kubectl`: the ``kubectl`` client that submits it, follows it
  to a final state, and fetches the job's log;
* :mod:`~workbook.launch.kuberay.pods`: the run as the pods see it (their paths, their command);
* :mod:`~workbook.launch.kuberay.launcher`: ``KubeRayLauncher``, the launcher the run steps and
  ``workbook rayjob --apply`` use, and what a KubeRay run directory records before it starts.
"""
