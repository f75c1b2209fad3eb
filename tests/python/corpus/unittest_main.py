import unittest


def slugify(s):
    return "-".join(s.lower().split())


class SlugTests(unittest.TestCase):
    def test_spaces(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_case(self):
        self.assertEqual(slugify("ABC"), "abc")

    def test_empty(self):
        self.assertEqual(slugify(""), "")


if __name__ == "__main__":
    print("running tests")
    unittest.main()
