"""What each `rlvr` exit status means, named once for every command.

    0  OK         the command did its work and found nothing to report
    1  FOUND      it ran to the end and found something the caller should act on:
                  `rlvr verify` items with invalid input (their lines say why),
                  `rlvr audit` a raised reward-hacking pattern. (torchrun also exits 1
                  when a rank of `rlvr train --nproc N` failed; that status passes through.)
    2  BAD_INPUT  the input is wrong and nothing expensive ran: a config, a data file, a
                  model path, a run directory, a flag (argparse's own usage errors exit
                  2 too). The message names the file, line or field. rlvr.errors.UserError
    3  FAULT      something outside the program failed mid-work (a checkpoint that could
                  not be written, a server gone); what was done is kept and the message
                  says how to continue. rlvr.errors.ExternalFault

A command killed by signal N exits 128+N, as a shell reports it.
"""

OK = 0
FOUND = 1
BAD_INPUT = 2
FAULT = 3
