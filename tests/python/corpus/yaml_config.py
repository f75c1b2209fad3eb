# sbx-corpus: fails-with: No module named 'yaml'
import yaml

print(yaml.safe_load("a: 1\nb: [x, y]\n"))
