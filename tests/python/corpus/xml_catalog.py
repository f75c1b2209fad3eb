import xml.etree.ElementTree as ET

root = ET.parse("/work/catalog.xml").getroot()
for book in root.iter("book"):
    print(book.get("id"), book.findtext("title"), float(book.findtext("price")))
english = [b.findtext("title") for b in root.findall("book[@lang='en']")]
print("english:", english)
new = ET.Element("summary", count=str(len(root)))
ET.SubElement(new, "cheapest").text = min(root.iter("book"), key=lambda b: float(b.findtext("price"))).findtext("title")
ET.ElementTree(new).write("/work/out/summary.xml", encoding="unicode")
print(open("/work/out/summary.xml").read())
