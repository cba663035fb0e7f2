"""The parts of bench/service.py, the service benchmark (run that script)."""
