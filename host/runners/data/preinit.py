# Run once in the data runner's interpreter at build time (by
# adapt/src/bin/sbx-data-preinit.rs); what it leaves in memory is what
# every run starts with. numpy and pandas: the imports that cost a data
# script most (pandas alone about a second under the meter). Not
# matplotlib: it settles its config folder as it is imported, and that
# folder is the run's, not the build's.
import gc

# As a run's prelude does: dateutil answers from the zones it bundles, not
# from four host folders (pandas asks it for UTC as it is imported).
import dateutil.tz.tz

dateutil.tz.tz.TZPATHS[:] = []

import numpy
import pandas

# The objects made so far live as long as the run: the collector need not
# walk them again (as CPython's own pre-forking servers do).
gc.collect()
gc.freeze()
