// Package music implements the MUSIC queue lock (a per-key lock table clustered
// by time UUID) as published, and music-seq, whose refs come from a per-key
// guard counter bumped by LWT.
package music
