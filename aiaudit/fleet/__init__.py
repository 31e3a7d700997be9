"""``aiaudit fleet``: one view of many nodes from their saved reports or event streams.

The flow is one way, like a scan's: :mod:`~aiaudit.fleet.inputs` reads files, directories,
globs and stdin one document at a time; :mod:`~aiaudit.fleet.extract` keeps of each report
only what aggregation needs (rule, subject, status, actual value, host facts) and drops the
rest; :mod:`~aiaudit.fleet.aggregate` folds the nodes into a frozen
:class:`~aiaudit.fleet.model.Fleet` (per-rule counts and host lists, :mod:`drift
<aiaudit.fleet.drift>`, :mod:`identity <aiaudit.fleet.identity>` findings, the change
:mod:`since <aiaudit.fleet.since>` a previous fleet report) that every renderer in
:mod:`aiaudit.fleet.render` turns into text, JSON, HTML or Prometheus.
"""
