"""The demo set: small problems written for this project, with reference solutions and
golden asserts. Used by the offline README command and by the tests."""

PROBLEMS = [
    dict(
        task_id="demo/0", entry_point="digit_sum",
        prompt='def digit_sum(n: int) -> int:\n    """Return the sum of the decimal digits of a non-negative integer.\n    >>> digit_sum(123)\n    6\n    """\n',
        solution="def digit_sum(n: int) -> int:\n    return sum(int(c) for c in str(n))\n",
        tests=["assert digit_sum(0) == 0", "assert digit_sum(7) == 7", "assert digit_sum(123) == 6",
               "assert digit_sum(9999) == 36", "assert digit_sum(10 ** 20) == 1"],
    ),
    dict(
        task_id="demo/1", entry_point="is_palindrome",
        prompt='def is_palindrome(text: str) -> bool:\n    """True when text reads the same backwards, ignoring case and every\n    character that is not a letter or digit.\n    >>> is_palindrome("A man, a plan, a canal: Panama")\n    True\n    """\n',
        solution="def is_palindrome(text: str) -> bool:\n    kept = [c.lower() for c in text if c.isalnum()]\n    return kept == kept[::-1]\n",
        tests=["assert is_palindrome('') is True", "assert is_palindrome('A man, a plan, a canal: Panama') is True",
               "assert is_palindrome('Racecar') is True", "assert is_palindrome('hello') is False",
               "assert not is_palindrome('ab')"],
    ),
    dict(
        task_id="demo/2", entry_point="fizzbuzz",
        prompt='from typing import List\n\n\ndef fizzbuzz(n: int) -> List[str]:\n    """The strings for 1..n: "Fizz" for multiples of 3, "Buzz" for multiples of 5,\n    "FizzBuzz" for both, otherwise the number itself.\n    >>> fizzbuzz(5)\n    [\'1\', \'2\', \'Fizz\', \'4\', \'Buzz\']\n    """\n',
        solution="from typing import List\n\n\ndef fizzbuzz(n: int) -> List[str]:\n    out = []\n    for i in range(1, n + 1):\n        word = ('Fizz' if i % 3 == 0 else '') + ('Buzz' if i % 5 == 0 else '')\n        out.append(word or str(i))\n    return out\n",
        tests=["assert fizzbuzz(0) == []", "assert fizzbuzz(1) == ['1']",
               "assert fizzbuzz(5) == ['1', '2', 'Fizz', '4', 'Buzz']", "assert fizzbuzz(15)[-1] == 'FizzBuzz'",
               "assert len(fizzbuzz(100)) == 100"],
    ),
    dict(
        task_id="demo/3", entry_point="running_max",
        prompt='from typing import List\n\n\ndef running_max(xs: List[int]) -> List[int]:\n    """The maximum of each prefix of xs.\n    >>> running_max([1, 3, 2, 5])\n    [1, 3, 3, 5]\n    """\n',
        solution="from typing import List\n\n\ndef running_max(xs: List[int]) -> List[int]:\n    out, best = [], None\n    for x in xs:\n        best = x if best is None or x > best else best\n        out.append(best)\n    return out\n",
        tests=["assert running_max([]) == []", "assert running_max([1, 3, 2, 5]) == [1, 3, 3, 5]",
               "assert running_max([-5, -7, -1]) == [-5, -5, -1]", "assert running_max([4, 4, 4]) == [4, 4, 4]"],
    ),
    dict(
        task_id="demo/4", entry_point="count_vowels",
        prompt='def count_vowels(text: str) -> int:\n    """Number of vowels (a, e, i, o, u; either case) in text.\n    >>> count_vowels("Hello World")\n    3\n    """\n',
        solution="def count_vowels(text: str) -> int:\n    return sum(1 for c in text.lower() if c in 'aeiou')\n",
        tests=["assert count_vowels('') == 0", "assert count_vowels('Hello World') == 3",
               "assert count_vowels('AEIOU') == 5", "assert count_vowels('rhythm') == 0",
               "assert count_vowels('Queueing') != 4"],
    ),
    dict(
        task_id="demo/5", entry_point="merge_intervals",
        prompt='from typing import List, Tuple\n\n\ndef merge_intervals(intervals: List[Tuple[int, int]]) -> List[Tuple[int, int]]:\n    """Merge overlapping closed intervals; the result is sorted by start.\n    >>> merge_intervals([(1, 3), (2, 6), (8, 10)])\n    [(1, 6), (8, 10)]\n    """\n',
        solution="from typing import List, Tuple\n\n\ndef merge_intervals(intervals: List[Tuple[int, int]]) -> List[Tuple[int, int]]:\n    merged = []\n    for start, end in sorted(intervals):\n        if merged and start <= merged[-1][1]:\n            merged[-1] = (merged[-1][0], max(merged[-1][1], end))\n        else:\n            merged.append((start, end))\n    return merged\n",
        tests=["assert merge_intervals([]) == []", "assert merge_intervals([(1, 3), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]",
               "assert merge_intervals([(5, 7), (1, 2)]) == [(1, 2), (5, 7)]",
               "assert merge_intervals([(1, 4), (4, 5)]) == [(1, 5)]", "assert merge_intervals([(1, 10), (2, 3)]) == [(1, 10)]"],
    ),
    dict(
        task_id="demo/6", entry_point="second_largest",
        prompt='from typing import List, Optional\n\n\ndef second_largest(xs: List[int]) -> Optional[int]:\n    """The second largest distinct value of xs, or None when there is none.\n    >>> second_largest([3, 1, 3, 2])\n    2\n    """\n',
        solution="from typing import List, Optional\n\n\ndef second_largest(xs: List[int]) -> Optional[int]:\n    distinct = sorted(set(xs))\n    return distinct[-2] if len(distinct) >= 2 else None\n",
        tests=["assert second_largest([3, 1, 3, 2]) == 2", "assert second_largest([5]) is None",
               "assert second_largest([]) is None", "assert second_largest([7, 7]) is None",
               "assert second_largest([-1, -2, -3]) == -2"],
    ),
    dict(
        task_id="demo/7", entry_point="rle_encode",
        prompt='def rle_encode(text: str) -> str:\n    """Run-length encoding: each run becomes the character followed by its length.\n    >>> rle_encode("aaabcc")\n    \'a3b1c2\'\n    """\n',
        solution="def rle_encode(text: str) -> str:\n    out = []\n    i = 0\n    while i < len(text):\n        j = i\n        while j < len(text) and text[j] == text[i]:\n            j += 1\n        out.append(f'{text[i]}{j - i}')\n        i = j\n    return ''.join(out)\n",
        tests=["assert rle_encode('') == ''", "assert rle_encode('aaabcc') == 'a3b1c2'", "assert rle_encode('x') == 'x1'",
               "assert rle_encode('aaaaaaaaaaaa') == 'a12'", "assert rle_encode('abab') == 'a1b1a1b1'"],
    ),
    dict(
        task_id="demo/8", entry_point="flatten",
        prompt='def flatten(nested: list) -> list:\n    """All non-list items of an arbitrarily nested list, left to right.\n    >>> flatten([1, [2, [3, 4]], 5])\n    [1, 2, 3, 4, 5]\n    """\n',
        solution="def flatten(nested: list) -> list:\n    out = []\n    for item in nested:\n        if isinstance(item, list):\n            out.extend(flatten(item))\n        else:\n            out.append(item)\n    return out\n",
        tests=["assert flatten([]) == []", "assert flatten([1, [2, [3, 4]], 5]) == [1, 2, 3, 4, 5]",
               "assert flatten([[[[]]]]) == []", "assert flatten(['a', ['b'], [['c']]]) == ['a', 'b', 'c']"],
    ),
    dict(
        task_id="demo/9", entry_point="gcd_list",
        prompt='from typing import List\n\n\ndef gcd_list(xs: List[int]) -> int:\n    """Greatest common divisor of a non-empty list of positive integers.\n    >>> gcd_list([12, 18, 24])\n    6\n    """\n',
        solution="from typing import List\n\n\ndef gcd_list(xs: List[int]) -> int:\n    def gcd(a, b):\n        while b:\n            a, b = b, a % b\n        return a\n    result = xs[0]\n    for x in xs[1:]:\n        result = gcd(result, x)\n    return result\n",
        tests=["assert gcd_list([12, 18, 24]) == 6", "assert gcd_list([7]) == 7", "assert gcd_list([5, 10, 3]) == 1",
               "assert gcd_list([100, 75]) == 25"],
    ),
    dict(
        task_id="demo/10", entry_point="word_freq",
        prompt='from typing import Dict\n\n\ndef word_freq(text: str) -> Dict[str, int]:\n    """Count the whitespace-separated words of text, lower-cased.\n    >>> word_freq("a B b")\n    {\'a\': 1, \'b\': 2}\n    """\n',
        solution="from typing import Dict\n\n\ndef word_freq(text: str) -> Dict[str, int]:\n    counts = {}\n    for word in text.lower().split():\n        counts[word] = counts.get(word, 0) + 1\n    return counts\n",
        tests=["assert word_freq('') == {}", "assert word_freq('a B b') == {'a': 1, 'b': 2}",
               "assert word_freq('The the THE') == {'the': 3}", "assert 'x' not in word_freq('y z')"],
    ),
    dict(
        task_id="demo/11", entry_point="primes_below",
        prompt='from typing import List\n\n\ndef primes_below(n: int) -> List[int]:\n    """All primes strictly smaller than n, ascending.\n    >>> primes_below(10)\n    [2, 3, 5, 7]\n    """\n',
        solution="from typing import List\n\n\ndef primes_below(n: int) -> List[int]:\n    if n < 3:\n        return []\n    sieve = [True] * n\n    sieve[0] = sieve[1] = False\n    for i in range(2, int(n ** 0.5) + 1):\n        if sieve[i]:\n            sieve[i * i::i] = [False] * len(range(i * i, n, i))\n    return [i for i, is_p in enumerate(sieve) if is_p]\n",
        tests=["assert primes_below(2) == []", "assert primes_below(10) == [2, 3, 5, 7]", "assert primes_below(3) == [2]",
               "assert len(primes_below(1000)) == 168", "assert primes_below(30)[-1] == 29"],
    ),
]

# Deliberately wrong solutions shipped beside the references, so that a demo run shows
# failures of each kind next to the passes.
WRONG_SAMPLES = [
    dict(task_id="demo/11", kind="off-by-one",
         solution="def primes_below(n):\n    return [p for p in range(2, n + 1) if all(p % d for d in range(2, p))]\n"),
    dict(task_id="demo/2", kind="wrong type",
         solution="def fizzbuzz(n):\n    return list(range(1, n + 1))\n"),
    dict(task_id="demo/9", kind="infinite loop",
         solution="def gcd_list(xs):\n    a = xs[0]\n    while True:\n        a = a\n    return a\n"),
    dict(task_id="demo/6", kind="exception",
         solution="def second_largest(xs):\n    return sorted(set(xs))[-2]\n"),
    dict(task_id="demo/1", kind="partial",
         solution="def is_palindrome(text):\n    return text == text[::-1]\n"),
    dict(task_id="demo/4", kind="syntax error",
         solution="def count_vowels(text)\n    return 0\n"),
    dict(task_id="demo/8", kind="shallow",
         solution="def flatten(nested):\n    out = []\n    for x in nested:\n        out.extend(x if isinstance(x, list) else [x])\n    return out\n"),
]
