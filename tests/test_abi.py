"""nsgen/abi.py's readers: names of a header in preprocessed text,
genksyms -T expansions, pahole layouts."""

from __future__ import annotations

import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from nsgen import abi  # noqa: E402

PREPROCESSED = '''# 1 "probe.c"
# 1 "/src/include/linux/other.h" 1
struct other { int x; };
int other_fn(void);
# 1 "/src/include/linux/module.h" 1
struct module {
 int state;
 struct { int a; } anon;
} __attribute__((__aligned__(64)));
typedef struct { int v; } modversion_t;
typedef void (*mod_cb_t)(struct module *);
typedef unsigned long mod_ulong;
enum module_state { MODULE_STATE_LIVE, MODULE_STATE_GOING };
enum { ANON_CONSTANT };
extern struct module __this_module;
extern int modules_disabled __attribute__((__section__(".data")));
int register_module_notifier(struct notifier_block *nb);
struct module *find_module(const char *name) __attribute__((__cold__));
void *__symbol_get(const char *symbol);
static inline int module_is_live(struct module *mod)
{
 return mod->state != 2;
}
static int hidden_helper(void);
_Static_assert(sizeof(int) == 4, "int");
'''


def test_names_of_a_header_only() -> None:
    n = abi.names_in(PREPROCESSED, {"include/linux/module.h"})
    assert n.types == {("struct", "module"), ("typedef", "modversion_t"),
                       ("typedef", "mod_cb_t"), ("typedef", "mod_ulong"),
                       ("enum", "module_state")}
    assert n.decls == {"__this_module", "modules_disabled",
                       "register_module_notifier", "find_module",
                       "__symbol_get"}


def test_expansions_follow_every_reached_definition() -> None:
    before = {"s#inner": "struct inner { int a ; }",
              "s#outer": "struct outer { s#inner i ; }",
              "f": "int f ( s#outer * )", "g": "int g ( int )"}
    after = dict(before, **{"s#inner": "struct inner { long a ; }"})
    b, a = abi.expansions(before), abi.expansions(after)
    assert b["f"] != a["f"]          # two levels down
    assert b["g"] == a["g"]
    assert set(b) == {"f", "g"}


PAHOLE = '''struct module {
	int                        state;                /*     0     4 */
	unsigned int               flag:1;               /*     4: 0  4 */

	/* XXX 4 bytes hole, try to pack */

	union {
		long               a;                    /*     8     8 */
		int                b;                    /*     8     4 */
	};                                               /*     8     8 */

	/* size: 64, cachelines: 1, members: 3 */
} __attribute__((__aligned__(64)));
struct other {
	int                        x;                    /*     0     4 */

	/* size: 4, cachelines: 1, members: 1 */
};
'''


def test_layouts_of_each_struct() -> None:
    lay = abi.layouts(PAHOLE)
    assert set(lay) == {"module", "other"}
    assert lay["module"]["<size>"] == (0, 64)
    assert lay["module"]["0:state"] == (0, 4)
    assert lay["module"]["0:flag"] == (32, 4)
    assert lay["module"]["1:a"] == (64, 8)
    assert lay["other"]["<size>"] == (0, 4)


def test_a_moved_member_and_a_new_size_are_changes() -> None:
    before = abi.Side(abi.Names(), {}, abi.layouts(PAHOLE), [])
    moved = PAHOLE.replace("/*     4: 0  4 */", "/*     4: 1  4 */") \
        .replace("size: 64,", "size: 128,")
    after = abi.Side(abi.Names(), {}, abi.layouts(moved), [])
    r = abi.Result("a", "b", "", [], [])
    abi.compare(before, after, r)
    assert any("member flag" in c for c in r.layout_changes)
    assert any("module: size" in c for c in r.layout_changes)
    assert not r.kept
