"""Fixtures for the tests of the kube layer (autoscaler/kube): the API emulator, a client of it, and a link
in front of it (tests/kube/emulated.py, shared with the service's tests)."""

from tests.kube.emulated import api as api
from tests.kube.emulated import emulator as emulator
from tests.kube.emulated import link as link
