// Package conversion holds the pieces the hand-written conversions of every
// served Event version share: how legacy reporter fields map onto the new
// ones, and which field selector labels each version accepts.
package conversion
