"""A Small Agent Group before it plays: its configuration (roles, sizes, backbones, method,
debate settings, presets, the group a command names), what each member reads (the shared
transcript, role instructions, a view group's member views), what a turn records and how a
failed model call fails its item.  The bottom layer of :mod:`sag`: it imports no other part."""
