package med

// NotConfigured is the DICT of a bank behind a PSP (MED_DICT_DISABLED=true):
// every call refused unsent, as depsOf wires it.
var NotConfigured DICT = notConfigured{}
