import pytest


@pytest.fixture(scope="module")
def client():
    """A 2-worker LocalCluster (one thread each, separate processes) as the default scheduler."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client
