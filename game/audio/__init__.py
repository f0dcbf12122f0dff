"""Sound: procedural ambience and reaction sounds (``synth``); speech and mixing live here too."""
