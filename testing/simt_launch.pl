#!/usr/bin/perl
# Rewrites CUDA launches for testing/simt.h: `kernel<targs><<<grid, block, smem, stream>>>(args)` becomes
# `::simt::launcher(grid, block, smem, stream)(&kernel<targs>)(args)`. Reads the source on stdin, writes stdout;
# fails when a `<<<` is left (a launch form it does not know).
use strict;
use warnings;
local $/;
my $src = <STDIN>;
$src =~ s/([A-Za-z_][\w:]*(?:<[^;{}()<>]*>)?)(\s*)<<<([^;]*?)>>>(\s*)\(/::simt::launcher($3)$2(&$1)$4(/gs;
die "simt_launch.pl: a launch it cannot rewrite is left\n" if $src =~ /<<</;
print $src;
