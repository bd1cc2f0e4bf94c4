// SPI slave (mode 0, MSB first) bridging to the register bus. Oversampled in the core clock:
// SCLK must be at most clk/5. Transaction: cmd (0x02 write / 0x03 read), 24-bit word
// address, then 32-bit big-endian words with address auto-increment; reads insert one dummy
// byte after the address.
`timescale 1ns / 1ps
`default_nettype none
module wccp_spi_slave (
    input  wire        clk,
    input  wire        rst,
    input  wire        spi_sck,
    input  wire        spi_cs_n,
    input  wire        spi_mosi,
    output wire        spi_miso,
    output reg  [23:0] reg_addr,
    output reg         reg_wr,
    output reg  [31:0] reg_wdata,
    output reg         reg_rd,
    input  wire [31:0] reg_rdata,
    input  wire        reg_rvalid
);
    reg [2:0] sck_s;
    reg [1:0] cs_s, mosi_s;
    always @(posedge clk) begin
        sck_s <= {sck_s[1:0], spi_sck};
        cs_s <= {cs_s[0], spi_cs_n};
        mosi_s <= {mosi_s[0], spi_mosi};
    end
    wire sck_rise = (sck_s[2:1] == 2'b01);
    wire cs_act   = !cs_s[1];

    reg [2:0]  bitn;
    reg [6:0]  sh;
    reg [2:0]  nbyte;       // 0 cmd, 1..3 address, 4 = data phase
    reg [1:0]  wbyte;
    reg [7:0]  cmd;
    reg [31:0] rd_word, sh_out;
    reg        rd_dummy_done, load_d;
    wire [7:0] byte_in = {sh[6:0], mosi_s[1]};
    // The byte-phase decodes are registered every cycle: bitn, nbyte, cmd, wbyte and
    // rd_dummy_done change only on sck_rise (or while deselected), and sck_rise is never
    // high two cycles in a row, so at every sck_rise the registered decode equals the
    // combinational one. load_now: last bit of the dummy byte or of a read data word (the
    // next word goes onto MISO).
    reg        wd_phase, load_now;
    always @(posedge clk) begin
        wd_phase <= (bitn == 3'd7) && (nbyte == 3'd4) && (cmd == 8'h02) && !cs_s[0] && !rst;
        load_now <= (bitn == 3'd7) && (nbyte == 3'd4) && (cmd == 8'h03) &&
                    (!rd_dummy_done || wbyte == 2'd3);
    end

    assign spi_miso = sh_out[31];
    // write data: wd_phase also holds the next cycle's select (!cs_s[0] is cs_act a cycle
    // early) and the reset of the cycle before (the data register itself has no reset)
    always @(posedge clk) if (sck_rise && wd_phase) reg_wdata <= {reg_wdata[23:0], byte_in};

    always @(posedge clk) begin
        reg_wr <= 1'b0;
        reg_rd <= 1'b0;
        if (reg_rvalid) rd_word <= reg_rdata;
        if (rst || !cs_act) begin
            bitn <= 3'd0;
            nbyte <= 3'd0;
            wbyte <= 2'd0;
            rd_dummy_done <= 1'b0;
            load_d <= 1'b0;
            sh_out <= 32'd0;
            if (rst) begin                 // (reg_wdata: data only, shifted in before use)
                reg_addr <= 24'd0;
                cmd <= 8'd0;
                rd_word <= 32'd0;
            end
        end else begin
            if (sck_rise) begin
                // MISO changes right after the master has sampled it (mode 0): the next bit
                // is on the pin a whole SCLK period before the next rising edge.
                if (load_now) begin
                    sh_out <= rd_word;
                    reg_addr <= reg_addr + 24'd1;
                end else begin
                    sh_out <= {sh_out[30:0], 1'b0};
                end
                sh <= byte_in[6:0];
                bitn <= bitn + 3'd1;
                if (bitn == 3'd7) begin
                    case (nbyte)
                    3'd0: begin cmd <= byte_in; nbyte <= 3'd1; end
                    3'd1: begin reg_addr[23:16] <= byte_in; nbyte <= 3'd2; end
                    3'd2: begin reg_addr[15:8] <= byte_in; nbyte <= 3'd3; end
                    3'd3: begin
                        reg_addr[7:0] <= byte_in;
                        nbyte <= 3'd4;
                        wbyte <= 2'd0;
                        if (cmd == 8'h03) reg_rd <= 1'b1;   // first word (address just completed)
                    end
                    default: begin
                        if (cmd == 8'h02) begin
                            wbyte <= wbyte + 2'd1;
                            if (wbyte == 2'd3) reg_wr <= 1'b1;
                        end else if (cmd == 8'h03) begin
                            if (!rd_dummy_done) rd_dummy_done <= 1'b1;
                            else wbyte <= wbyte + 2'd1;
                        end
                    end
                    endcase
                end
            end
            if (reg_wr) reg_addr <= reg_addr + 24'd1;
            load_d <= sck_rise && load_now;
            if (load_d) reg_rd <= 1'b1;   // prefetch the next word (address already incremented)
        end
    end
endmodule
`default_nettype wire
