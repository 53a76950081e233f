#!/usr/bin/perl
# Rewrites CUDA launches for testing/simt.h: `kernel<targs><<<grid, block, smem, stream>>>(args)` becomes
# `::simt::launcher(grid, block, smem, stream)(&kernel<targs>)(args)`, `extern __shared__ T name[];` becomes a
# pointer into the launch's dynamic shared memory, and `__shared__ T name[dims];` a static simt::SharedVar (the
# variable and a guard, poisoned when each block first reaches it, the guard checked at the block's end) with a
# reference `name` to the variable. Reads the source on stdin, writes stdout; fails when a `<<<` or a `__shared__`
# is left (a form it does not know).
use strict;
use warnings;
local $/;
my $src = <STDIN>;
$src =~ s/([A-Za-z_][\w:]*(?:<[^;{}()<>]*>)?)(\s*)<<<([^;]*?)>>>(\s*)\(/::simt::launcher($3)$2(&$1)$4(/gs;
# extern __shared__ [__align__(n)] T name[]; -> a pointer into the launch's dynamic shared memory.
$src =~ s/extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([\w:]+)\s+(\w+)\s*\[\s*\]\s*;/$1* const $2 = static_cast<$1*>(::simt::dynamicSmem());/g;
die "simt_launch.pl: an extern __shared__ it cannot rewrite is left\n" if $src =~ /extern\s+__shared__/;
# __shared__ T name[dims]; -> a static local, poisoned when each block first reaches it (simt::staticSmem).
$src =~ s/(?<![\w"])__shared__\s+([\w:<>, ]+?)\s+(\w+)((?:\s*\[[^\]]*\])*)\s*;/static ::simt::SharedVar<$1$3> simt_shared_$2; auto& $2 = ::simt::staticSmem(simt_shared_$2, "$2");/g;
die "simt_launch.pl: a __shared__ declaration it cannot rewrite is left\n" if $src =~ /(?<![\w"])__shared__/;
die "simt_launch.pl: a launch it cannot rewrite is left\n" if $src =~ /<<</;
print $src;
