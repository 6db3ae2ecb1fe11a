"""The executor server's entry point: `python -P -s serve.py`.

Loads this folder's modules as a private package, so that the server and its children import neither the
rest of pytest_apps nor anything named after it (a candidate finds no pytest objects to patch).
"""

import os
import sys
import types

if __name__ == "__main__":
    package = types.ModuleType("_apps_executor")
    package.__path__ = [os.path.dirname(os.path.abspath(__file__))]
    sys.modules[package.__name__] = package
    from _apps_executor.server import main

    main()
