#!/usr/bin/perl
# Rewrites CUDA launches for testing/simt.h: `kernel<targs><<<grid, block, smem, stream>>>(args)` becomes
# `::simt::launcher(grid, block, smem, stream)(&kernel<targs>)(args)`, and `extern __shared__ T name[];` becomes a
# pointer into the launch's dynamic shared memory. Reads the source on stdin, writes stdout; fails when a `<<<` or
# an `extern __shared__` is left (a form it does not know).
use strict;
use warnings;
local $/;
my $src = <STDIN>;
$src =~ s/([A-Za-z_][\w:]*(?:<[^;{}()<>]*>)?)(\s*)<<<([^;]*?)>>>(\s*)\(/::simt::launcher($3)$2(&$1)$4(/gs;
# extern __shared__ [__align__(n)] T name[]; -> a pointer into the launch's dynamic shared memory.
$src =~ s/extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([\w:]+)\s+(\w+)\s*\[\s*\]\s*;/$1* const $2 = static_cast<$1*>(::simt::dynamicSmem());/g;
die "simt_launch.pl: an extern __shared__ it cannot rewrite is left\n" if $src =~ /extern\s+__shared__/;
die "simt_launch.pl: a launch it cannot rewrite is left\n" if $src =~ /<<</;
print $src;
