"""The whole method end to end on one machine (:mod:`.run`) and the report it writes (:mod:`.report`).

The pipeline sits above every stage package: it calls annotation, training and evaluation as
libraries, with their config dataclasses, never through the command line.
"""
