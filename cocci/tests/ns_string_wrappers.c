// Wrappers: baked-in namespaces are quoted, pass-through parameters stay.
#include <linux/module.h>

/* A wrapper that bakes its namespace in (iwlwifi, brcmfmac, acpi.h). */
#define IWL_EXPORT_SYMBOL(sym)	EXPORT_SYMBOL_NS_GPL(sym, IWLWIFI)

/* Split over lines, as in kunit/visibility.h. */
#define EXPORT_SYMBOL_IF_KUNIT(symbol) EXPORT_SYMBOL_NS(symbol, \
	    EXPORTED_FOR_KUNIT_TESTING)

/* Token pasting builds the symbol. */
#define EXPORT_TWO(x) EXPORT_SYMBOL_NS_GPL(peci_xfer_##x, PECI)

/* A pass-through wrapper: ns is a parameter and must stay bare. */
#define LOCAL_EXPORT(sym, ns) EXPORT_SYMBOL_NS_GPL(sym, ns)

IWL_EXPORT_SYMBOL(iwl_foo);
EXPORT_TWO(readb);

EXPORT_NS_GPL_DEV_PM_OPS(foo_pm_ops, FOO_PM) = {
	SYSTEM_SLEEP_PM_OPS(foo_suspend, foo_resume)
	RUNTIME_PM_OPS(foo_runtime_suspend, foo_runtime_resume, NULL)
};

EXPORT_NS_GPL_SIMPLE_DEV_PM_OPS(bar_pm_ops, bar_suspend, bar_resume, BAR_PM);
EXPORT_NS_GPL_RUNTIME_DEV_PM_OPS(baz_pm_ops, baz_runtime_suspend,
				 baz_runtime_resume, NULL, BAZ_PM);
