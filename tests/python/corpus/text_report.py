import string
import textwrap

text = open("/work/notes.txt").read()
print(textwrap.fill(" ".join(text.split()), width=40))
print(textwrap.indent(textwrap.dedent("""\
    - one
    - two"""), "> "))
t = string.Template("$name owes $$${amount}")
print(t.substitute(name="Ada", amount="12.50"), string.capwords("the west region"))
