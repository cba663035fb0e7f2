"""Values read from outside, and the rules for reading them — knowing nothing of autoscaling.

* :mod:`~autoscaler.values.fields`: walking an untrusted document with every error collected against its
  path (:class:`~autoscaler.values.fields.SpecError`, :func:`~autoscaler.values.fields.problem_report`);
* :mod:`~autoscaler.values.limits`: the depth and size every document is held to;
* :mod:`~autoscaler.values.yaml_files`: YAML files and text read into JSON's data model, under those limits;
* :mod:`~autoscaler.values.quantity`: Kubernetes resource quantities, exactly as apimachinery reads them;
* :mod:`~autoscaler.values.durations`: Go's, Prometheus' and the command line's durations;
* :mod:`~autoscaler.values.timestamps`: RFC 3339 times, read and printed.

This package imports nothing from the rest of ``autoscaler`` (``tests/test_layers.py`` holds it to that),
as kopf's ``_cogs`` knows nothing of kopf: the HPA's decisions (:mod:`autoscaler.core`) and the shell around
them build on it, never the other way round.
"""
