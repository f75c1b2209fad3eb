import calendar

print(calendar.month(2024, 2), end="")
print(calendar.isleap(2024), calendar.monthrange(2024, 2)[1], calendar.day_name[calendar.weekday(2024, 3, 1)])
