/* The kernel's namespace macros, as the 6.12 headers define them: the
 * fixtures' prelude, from which the test finds the macro names. */
#define __EXPORT_SYMBOL(sym, license, ns) extern typeof(sym) sym
#define EXPORT_SYMBOL_NS(sym, ns)	__EXPORT_SYMBOL(sym, "", __stringify(ns))
#define EXPORT_SYMBOL_NS_GPL(sym, ns)	__EXPORT_SYMBOL(sym, "GPL", __stringify(ns))
#define MODULE_IMPORT_NS(ns)	MODULE_INFO(import_ns, __stringify(ns))
#define _EXPORT_PM_OPS(name, license, ns)	__EXPORT_SYMBOL(name, license, ns)
#define _EXPORT_DEV_PM_OPS(name, license, ns)	_EXPORT_PM_OPS(name, license, ns)
#define EXPORT_NS_GPL_DEV_PM_OPS(name, ns)	_EXPORT_DEV_PM_OPS(name, "GPL", #ns)
#define EXPORT_NS_GPL_SIMPLE_DEV_PM_OPS(name, suspend_fn, resume_fn, ns) \
	EXPORT_NS_GPL_DEV_PM_OPS(name, ns) = { \
		SYSTEM_SLEEP_PM_OPS(suspend_fn, resume_fn) \
	}
#define EXPORT_NS_GPL_RUNTIME_DEV_PM_OPS(name, suspend_fn, resume_fn, idle_fn, ns) \
	EXPORT_NS_GPL_DEV_PM_OPS(name, ns) = { \
		RUNTIME_PM_OPS(suspend_fn, resume_fn, idle_fn) \
	}
