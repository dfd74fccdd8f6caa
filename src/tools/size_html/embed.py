"""Writes a C++ header holding a text file as one string constant: the page
template of size --html (page.html), compiled into the binary.

    embed.py INPUT OUTPUT NAME
"""
import sys

DELIM = 'ot_embed'


def main():
    src, dst, name = sys.argv[1:4]
    with open(src, encoding='utf-8') as f:
        text = f.read()
    if ')%s"' % DELIM in text:
        sys.exit('%s: holds the raw string\'s end )%s"' % (src, DELIM))
    with open(dst, 'w', encoding='utf-8') as f:
        f.write('// Written by src/tools/size_html/embed.py from %s: do not edit.\n#pragma once\n\n'
                'inline constexpr char %s[] = R"%s(%s)%s";\n' % (src.rsplit('/', 1)[-1], name, DELIM, text, DELIM))


if __name__ == '__main__':
    main()
