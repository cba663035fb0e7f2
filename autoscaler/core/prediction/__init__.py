"""Predictive scale-up (``spec.prediction``): a forecast of a metric's value a horizon ahead, from its own
history, entering the decision as a floor (never lowering it). The spec is :mod:`.spec`, the models
:mod:`.forecast`."""
