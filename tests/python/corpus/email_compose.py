from email import message_from_bytes, policy
from email.message import EmailMessage

msg = EmailMessage()
msg["From"] = "agent@example.org"
msg["To"] = "ada@example.org"
msg["Subject"] = "Weekly sales"
msg.set_content("Summary attached.\n")
msg.add_attachment(open("/work/sales.csv", "rb").read(), maintype="text", subtype="csv", filename="sales.csv")
msg.add_attachment(b"\x89PNG\r\n\x1a\n" + bytes(16), maintype="image", subtype="png", filename="chart.png")
raw = msg.as_bytes()
open("/work/out/weekly.eml", "wb").write(raw)
back = message_from_bytes(raw, policy=policy.default)
print(back["Subject"], [p.get_filename() for p in back.iter_attachments()])
print(back.get_body(("plain",)).get_content(), end="")
from email.mime.image import MIMEImage
print(MIMEImage(b"GIF89a" + bytes(10), "gif").get_content_type())
