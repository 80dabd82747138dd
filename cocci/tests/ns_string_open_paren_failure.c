// Known gap: when the line breaks right after the opening parenthesis,
// spatch 1.1.1 pulls the quoted namespace up onto the first line, which
// shifts every later line.  No call in the 6.12 tree is written this way.
MODULE_IMPORT_NS(
	BAZ);
