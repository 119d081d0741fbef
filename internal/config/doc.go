// Package config owns the service's configuration: one struct, read from the
// environment, with every default in one place. A value that is set but can't
// be parsed is an error, never a silent fallback to the default.
package config
