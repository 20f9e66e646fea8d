"""Pod-scale runs on Dask: `open_profile(path, client=dask_client)` decodes each host on a worker
and gives a `PodProfile` (pod/profile.py); docs/pod.md tells how to set a cluster up. Importing
this package does not import Dask."""

from .profile import NotDistributed, PodProfile, open_pod
from .watch import WaitReport

__all__ = ["NotDistributed", "PodProfile", "WaitReport", "open_pod"]
