def median(values):
    """The middle value.

    >>> median([3, 1, 2])
    2
    >>> median([4, 1, 3, 2])
    2.5
    """
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


if __name__ == "__main__":
    import doctest

    result = doctest.testmod()
    print("failed", result.failed, "attempted", result.attempted)
