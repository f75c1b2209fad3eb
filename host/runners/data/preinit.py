# Run once in the data runner's interpreter at build time (by
# adapt/src/bin/sbx-data-preinit.rs); what it leaves in memory is what
# every run starts with. numpy, pandas and matplotlib's pyplot: the imports
# that cost a data script most (pandas and pyplot each about a second and
# billions of fuel under the meter).
import gc

# dateutil answers from the zones it bundles, not from four host folders
# (pandas asks it for UTC as it is imported, and a run asks it again): each
# look would be a refusal on record. Emptied here, once, for every run.
import dateutil.tz.tz

dateutil.tz.tz.TZPATHS[:] = []

import numpy
import pandas

# matplotlib settles its backend and its config folder as it is imported:
# the ones a run has (the prelude sets the same), the folder in the run's
# private /tmp. Its font list, made here over its own fonts (the only ones
# the runner has), stays in memory; the file it writes goes with the
# build's scratch /tmp.
import os

os.environ["MPLBACKEND"] = "Agg"
os.environ["MPLCONFIGDIR"] = "/tmp/.matplotlib"
import matplotlib.pyplot

del os.environ["MPLBACKEND"], os.environ["MPLCONFIGDIR"]

# The objects made so far live as long as the run: the collector need not
# walk them again (as CPython's own pre-forking servers do).
gc.collect()
gc.freeze()
