"""A view group (members reading different views of a DDXPlus-8 case) measured: its
measures, goals and report (``python -m sag eval-views``, ``python -m sag views-report``)
and the demo's featured run (``docs/group_views.md``)."""
