# sbx-corpus: data
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

plt.bar(["north", "south"], [3, 5])
plt.savefig("/work/out/chart.png")
print("saved")
