"""The compiled kernels (Cython, built ahead of time into the wheel), one module per concern.

Called with numpy arrays by the modules that own each concern (`profile/_wire.py`,
`profile/hlo.py`, `trace/_lod.py`, ...); the rest of the package never imports this package.
"""
