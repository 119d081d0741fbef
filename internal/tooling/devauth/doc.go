// Package devauth is the development token issuer as the project's tools
// see it: its defaults, in one place (pixctl, pixfaults and, through
// `pixctl dev-issuer -env`, the scripts read them here), and the bearer
// tokens it mints for the tools' own requests to the customer routes,
// minted again before they expire. The issuer itself (its key pair, its
// JWKS file, the tokens' claims) is internal/auth's DevIssuer.
package devauth
