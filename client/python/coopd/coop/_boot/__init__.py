"""Not imported: this directory goes first on PYTHONPATH for python -m coopd.coop run."""
