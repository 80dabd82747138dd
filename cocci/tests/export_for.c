// The table names fpu_swap_kvm_fpstate only.
void fpu_swap_kvm_fpstate(void) { }
EXPORT_SYMBOL_GPL(fpu_swap_kvm_fpstate);

/* Not in the table: untouched. */
void fpu_other(void) { }
EXPORT_SYMBOL_GPL(fpu_other);
EXPORT_SYMBOL(fpu_plain);

/* Already restricted: untouched. */
EXPORT_SYMBOL_GPL_FOR(fpu_done, "kvm");
