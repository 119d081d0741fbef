package auth

import "testing"

// What checkJWKSURL does with the forms of a loopback (or not) address.
// Every case is what it should be: recorded as evidence of what was tried.
func TestReattackCheckJWKSURLForms(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://id.bank.example/jwks.json":         true,
		"http://127.0.0.1:8080/jwks.json":           true,
		"http://127.0.0.2/jwks.json":                true, // 127/8 is loopback
		"http://[::1]:8080/jwks.json":               true,
		"http://[0:0:0:0:0:0:0:1]/jwks.json":        true,
		"http://[::ffff:127.0.0.1]/jwks.json":       true, // IPv4-mapped loopback: still loopback
		"http://localhost:8080/jwks.json":           true,
		"HTTP://127.0.0.1/jwks.json":                true, // the scheme is case-insensitive; still loopback
		"HTTP://id.bank.example/jwks.json":          false,
		"http://0.0.0.0/jwks.json":                  false,
		"http://[::]/jwks.json":                     false,
		"http://127.1/jwks.json":                    false,
		"http://2130706433/jwks.json":               false,
		"http://0x7f000001/jwks.json":               false,
		"http://localhost./jwks.json":               false,
		"http://LOCALHOST/jwks.json":                false,
		"http://foo.localhost/jwks.json":            false,
		"http://127.0.0.1.nip.io/jwks.json":         false,
		"http://localhost@evil.example/jwks.json":   false,
		"http://127.0.0.1@evil.example/jwks.json":   false,
		"http://evil.example#@127.0.0.1/jwks.json":  false,
		"http://evil.example\\@127.0.0.1/jwks.json": false,
		"http://[::1%25eth0]/jwks.json":             false,
		"http:///127.0.0.1/jwks.json":               false,
		"//127.0.0.1/jwks.json":                     false,
		"ftp://127.0.0.1/jwks.json":                 false,
		"file:///etc/jwks.json":                     false,
		" http://127.0.0.1/jwks.json":               false,
		"http://127.0.0.1:8080@evil.example/":       false,
	} {
		if err := CheckJWKSURL(raw); (err == nil) != ok {
			t.Errorf("CheckJWKSURL(%q) = %v, want accepted=%v", raw, err, ok)
		}
	}
}
