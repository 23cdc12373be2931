"""Checker functions for the chapters' exercises, one module per chapter.

A checker runs the student's function on seeded random inputs, compares the result with the
package's own answer, prints one line (a success line, or what is off and a hint) and returns a
bool. A wrong or unfinished answer never raises. Import the module of the chapter, e.g.
``from bwt_lite.exercises.bayes_by_hand import check_posterior``.
"""
