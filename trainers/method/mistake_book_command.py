"""``codea1 mistake-book show FILE``: a Mistake Book file of a training run, registered like
any plugin's command (the book is the training method's, so is its command)."""

from __future__ import annotations

import json

from codea1.harness.command import Command
from codea1.harness.errors import Codea1Error
from codea1.harness.hookspecs import hookimpl
from codea1.harness.registry import did_you_mean
from codea1.trainers.method.mistake_book import MistakeBook


class MistakeBookCommand(Command):
    name = "mistake-book"
    description = "show a Mistake Book file (DIR/mistake_book/step-N.json of a training run)"

    def add_arguments(self, p):
        sub = p.add_subparsers(dest="book_command", required=True)
        show = sub.add_parser("show", help="questions, their tests and frequencies, most frequent first")
        show.add_argument("file")
        show.add_argument("--question", help="this question only")
        show.add_argument("--top", type=int, help="at most this many tests per question")
        show.add_argument("--json", action="store_true", help="print the file's JSON (of the question, if given)")

    def run(self, plugins, args):
        book = MistakeBook.load(args.file)
        questions = [args.question] if args.question else sorted(book.questions)
        if args.question and args.question not in book.questions:
            raise Codea1Error(f"{args.file}: no question {args.question!r} in this book"
                              f"{did_you_mean(args.question, book.questions)}")
        if args.json:
            data = book.to_json()
            data["questions"] = {q: data["questions"][q] for q in questions}
            print(json.dumps(data, indent=1))
            return 0
        for q in questions:
            tests = book.retrieve(q, top=args.top or len(book.questions[q]))
            print(f"{q}  ({len(book.questions[q])} tests)")
            for test in tests:
                print(f"  {book.questions[q][test]:>4}  {test}")
        print(f"\n{len(book.questions)} questions, {book.size()} tests")
        return 0


@hookimpl
def codea1_register_commands(registry):
    registry.add(MistakeBookCommand)
