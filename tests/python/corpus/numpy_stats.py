# sbx-corpus: data
import numpy as np

a = np.loadtxt("/work/sales.csv", delimiter=",", skiprows=1, usecols=(3, 4))
print(a.shape, a[:, 0].sum(), round(float((a[:, 0] * a[:, 1]).sum()), 2))
print(np.arange(1_000_000, dtype=np.float64).sum())
