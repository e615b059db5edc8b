// blindmatch/worker is a worker entry script: it has no exports. Use
// `BlindmatchWorker` from 'blindmatch' to talk to it.
export {};
