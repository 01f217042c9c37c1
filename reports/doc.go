// Package reports renders a checked run as one self-contained HTML file and
// keeps the store of past runs.
package reports
