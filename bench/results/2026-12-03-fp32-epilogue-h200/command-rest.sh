#!/bin/bash
# H200 run: the GPU tests the last run's limit cut off, with the machine to themselves.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 200 build/tests/kiln_gpu_tests --gtest_filter='OnlineReduceGpu.EveryKindOfConfig:PointwiseGpu.ChainWithBroadcastConstantsAndTwoOutputs:PointwiseGpu.ComparisonsAndSelect:ProgramGpu.RunsOnCallerDeviceBuffers:QuantGpu.DecodeRowsOnGemvEveryFormat:QuantGpu.EveryGemvCandidatePassesItsCheck:ReduceAxesGpu.Mean:ReduceAxesGpu.TallColumnMeans:ReferenceGpu.BroadcastBatchDims:RowReduceGpu.AddRmsNormBothOutputs:RowReduceGpu.HigherRankRows:RowReduceGpu.LayerNorm:RowReduceGpu.RowSumMaxMinMean:RowReduceGpu.Softmax:RuntimeGpu.AxpyThroughTheCacheMatchesTheCpu:RuntimeGpu.BadLaunchNamesTheKernelAndConfig:RuntimeGpu.BuffersRoundTrip:RuntimeGpu.CopyBandwidthIsPositive:RuntimeGpu.DeviceReportsItsProperties:RuntimeGpu.FailedAllocationNamesTheCallAndTheCode:RuntimeGpu.GraphTimingRefusesAnEmptyCapture:RuntimeGpu.GraphTimingRunsTheCapturedLaunches:RuntimeGpu.MissingKernelNamesIt:RuntimeGpu.ReadAndWriteCeilingsAreOfTheCopysOrder:RuntimeGpu.Sm90aKernelWithWgmmaLoads:RuntimeGpu.TimingGivesAPositiveMedian:SharedMemoryRowsGpu.EveryReductionMatchesTheReference' > $R/gpu-tests-rest-$i.log 2>&1 &
done
wait
