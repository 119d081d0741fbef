// Package rfc3339 owns the one strict reader of RFC 3339's date-time
// (section 5.6), the DICT specification's format date-time: the DICT's
// simulator and spec checker (internal/dict/dictspec) and the product's
// readers of the DICT's notices (saga/med) share it.
package rfc3339
