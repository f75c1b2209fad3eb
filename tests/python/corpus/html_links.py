from html.parser import HTMLParser


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.cells, self.title, self._in_title = [], [], "", False

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs)["href"])
        self._in_title = tag == "title"

    def handle_data(self, data):
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag):
        self._in_title = False


p = Links()
p.feed(open("/work/page.html").read())
print("title:", p.title)
print("\n".join(p.links))
