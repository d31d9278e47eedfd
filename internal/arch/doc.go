// Package arch holds no code: its test keeps the layers of docs/architecture.md.
// Every package of the module has a layer; a package imports only its own layer
// and those below, one cloud's packages never import another cloud's, and no
// shipped package imports test/. A new package without a layer fails the test
// until it is given one.
package arch
