def pytest_configure(config):
    # The package must be installed: a missing package fails the run, never skips it.
    import torchrs  # noqa: F401
