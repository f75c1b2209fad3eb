text = "東京 売上 報告"
for codec in ("shift_jis", "euc_jp", "iso2022_jp", "gb2312", "big5", "euc_kr", "utf-16"):
    try:
        data = text.encode(codec)
        print(codec, len(data), data.decode(codec) == text)
    except UnicodeEncodeError as e:
        print(codec, "cannot encode", e.start)
open("/work/out/report_sjis.txt", "wb").write(text.encode("shift_jis"))
print(open("/work/out/report_sjis.txt", encoding="shift_jis").read())
